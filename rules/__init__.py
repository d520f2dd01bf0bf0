"""The rule files shipped with the sidecar (data only; a regular package so that
importlib.resources finds them in an editable install too)."""
