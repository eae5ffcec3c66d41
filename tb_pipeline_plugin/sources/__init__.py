"""Where a run's data comes from: the logdir's runs and their artifacts.

`logdir` discovers runs, workers, spans and statistics files through
TensorBoard's filesystem layer (the only module here that imports it);
`artifacts` names one loadable artifact of a run and loads it.
"""
