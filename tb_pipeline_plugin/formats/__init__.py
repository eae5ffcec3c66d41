"""Record formats shared by the writing side (record/, diagnose/) and the
reading side (pipeline/, sources/): the only code both may import."""
