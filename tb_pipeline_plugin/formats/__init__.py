"""Record formats shared by the writing side (record/, diagnose/) and the
reading side (readers/, sources/): the only code both may import."""
