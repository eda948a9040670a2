"""The text of line protocols: a bounded line reader, an external engine's process, and the
words of GTP and of Piskvork (vertices, colours, squares, rules) shared by our engines and the
players that drive other programs."""
