"""The runtimes: what runs a compiled artifact (the `Runtime` protocol, the registry of
runtimes, the bundled numpy simulator and its process-isolating variant, devices).

It reads artifacts and never imports the compiler or the language.
"""
