"""Two runs' pipeline statistics compared: summary deltas, stage and callback rows, significance, the explanation's pipeline part."""
