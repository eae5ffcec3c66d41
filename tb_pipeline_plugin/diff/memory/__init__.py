"""Two runs' memory compared: both peaks, growth, attribution joined, and the sentence."""
