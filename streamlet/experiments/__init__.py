"""Scale-out experiments as a product: `streamlet experiment run SCENARIO` and `streamlet experiment report`.

`scenario` parses and checks a TOML scenario (pure), `runner` starts a broker if needed, real worker
processes and an input producer, runs the timeline and collects the leader's assignment history into a run
directory, and `report` turns a run directory's events into seed 000's round-by-round tables (pure).
"""
