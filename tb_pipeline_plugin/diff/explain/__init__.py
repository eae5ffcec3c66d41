"""Why is one run slower: the `diff/explain` answer, one module per part:

* contributors.py: the step-time delta split into ranked contributors
  (`explain`, which assembles the answer);
* sentence.py: the explanation in one sentence;
* waterfall.py: the bars from the baseline's step to the experimental's;
* pipeline.py: the pipeline part, from both runs' recorded statistics (the
  data wait per step, the input-bound change, the stage that changed most),
  and its clause of the sentence;
* words.py: durations as every sentence writes them, and the input-bound
  words (a leaf of the package: it imports nothing of ours).

The memory diff's sentence is not here: it is part of the `diff/memory`
answer, written from the memory comparison alone (diff/memory/sentence.py),
and borrows only the durations of words.py, so it stays with memory. The
significance of each number is diff/significance/'s.

Callers import each name from the module that defines it; this file
defines nothing.
"""
