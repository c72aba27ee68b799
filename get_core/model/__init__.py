"""The fitted model: ObliqueTree (plain numpy), its model file and the code generated from it."""
