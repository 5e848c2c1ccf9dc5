"""Placeholder: see the Blender issues."""
