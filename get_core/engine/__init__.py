"""Training: the soft tree, its optimizer and everything that runs it. The only package that imports torch."""
