"""The Faust-style layer: agents, tables, channels, timers and replies, compiled onto the DSL and the runtime.

Users reach it through `streamlet.App` (`app.agent`, `app.Table`, `app.timer`, ...); the modules here are its
parts, each importing only those below it and the DSL and runtime underneath.
"""
