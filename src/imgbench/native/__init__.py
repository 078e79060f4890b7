"""Native ceilings: the C libraries' own benchmark tools, run on the same images."""
