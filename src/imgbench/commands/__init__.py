"""Typer sub-apps whose commands join several floors (a dataset command that converts into a
format): the front door's, beside ``imgbench.cli``, which registers them lazily."""
