"""Is a delta more than noise, one module per part of the answer:

* method.py: the method and the policy (bootstrap interval, level drift,
  between-run spread, a group's recording-level test, no verdict resting on
  one step), the verdicts and their words (`VERDICT_WORDS`), `NoisePolicy`;
* marks.py: the marks of module pieces and operator / kernel rows;
* pipeline.py: the verdicts of the pipeline comparison (the step split per
  recorded step, the data wait, a stage's task time across groups) and the
  one step verdict from every recorded step (`recorded_step`);
* conclusive.py: what would make an inconclusive step verdict conclusive;
* between_runs.py: the between-run spread measured on replicas
  (`tb-pipeline noise`), what `NoisePolicy.between_run_pct` should be;
* withheld.py: a verdict withheld (`not_comparable`: the numbers stay).

Callers import each name from the module that defines it; this file
defines nothing.
"""
