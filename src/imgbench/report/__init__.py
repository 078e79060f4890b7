"""`imgbench report`: the answer as one self-contained HTML file, or Markdown."""
