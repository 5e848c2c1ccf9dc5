"""Headless baking's checks and plumbing, on any Python 3.11+ (standard library only; bpy only
inside the functions that run in Blender, imported there): cli.py's arguments, the shot list,
the library scan, the commands that start Blender.

Imported as `headless` where the repository root is on sys.path (tools/bake_shots.py, on a
Python without numpy, and the tests), as the extension's subpackage (the Flamenco submission, in
the submitting Blender), and by cli.py, which runs as a plain script, by path. Every module here
imports its siblings relatively and nothing else of the extension."""
