"""The faces of convlab: the ``convlab`` command, terminal display, exit codes, widgets."""
