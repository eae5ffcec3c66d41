"""Record formats shared by the writing side (record/, diagnose/) and the
reading side (pipeline/): the only code both may import."""
