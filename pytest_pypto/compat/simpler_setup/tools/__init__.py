"""``simpler_setup.tools``: readers of the simulator's DFX outputs."""
