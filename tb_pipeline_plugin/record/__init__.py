"""Writing side: record pipeline statistics from a training loop.

    from tb_pipeline_plugin.record import Recorder
    with Recorder("runs", "exp") as rec:     # logdir, run: writes runs/exp/pipeline/
        for x, y in rec.wrap(loader):        # data wait = time in next()
            loss = step(x, y)
            with rec.callback("logging"):    # or @rec.callback("logging")
                log(loss)

No code change: `tb-pipeline record --logdir runs --run exp -- python train.py`.
Imports `formats` and the `import_hook` leaf (and `diagnose`, under
TB_PIPELINE_DIAGNOSTIC_MODE=1).
"""
from .recorder import Recorder

__all__ = ["Recorder"]
