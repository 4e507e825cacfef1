"""System tests; a package so the shared kernels import as ``st.kernels`` (also from bench/)."""
