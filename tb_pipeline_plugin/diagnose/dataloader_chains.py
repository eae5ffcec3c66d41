"""PyTorch DataLoader: the chains the engine profiles for one loader.

1. sampler indices -> Dataset.__getitem__ -> batches of batch_size -> collate_fn
2. when the dataset exposes a callable `transform`: the transform's inputs
   (captured once from the dataset's own calls) -> transform
3. batches of indices -> whole batch (fetch + collate), swept over processes
   as DataLoader's num_workers would run it, and over threads.
Iterable-style datasets have no __getitem__: their items are cached and
only collate_fn is profiled.

Every stage's process levels run as DataLoader's worker processes do
(`WorkerStart`): one torch intra-op thread, then the loader's
`worker_init_fn`, which may set its own.
"""
from __future__ import annotations

import itertools
from typing import Any

from .intra_op import set_torch_threads
from .stages import Stage, batches_of, regroup


class GetItem:
    """Picklable `dataset[index]` (bound methods of local classes often are not)."""

    def __init__(self, dataset):
        self.dataset = dataset

    def __call__(self, index):
        return self.dataset[index]


class WholeBatch:
    def __init__(self, dataset, collate_fn):
        self.dataset, self.collate_fn = dataset, collate_fn

    def __call__(self, indices):
        return self.collate_fn([self.dataset[i] for i in indices])


class WorkerStart:
    """What torch's worker loop does before a worker fetches anything
    (torch/utils/data/_utils/worker.py): `torch.set_num_threads(1)`, the
    worker's `get_worker_info()`, then the user's `worker_init_fn(worker_id)`,
    so a setting of their own there wins. Picklable for spawned workers."""

    THREADS = 1

    def __init__(self, dataset, worker_init_fn=None):
        self.dataset, self.worker_init_fn = dataset, worker_init_fn

    def __call__(self, worker_id: int, num_workers: int) -> None:
        set_torch_threads(self.THREADS)
        # get_worker_info() as in a worker: the user's code may read it, and default_collate then collates into
        # shared memory, which a worker pays for. Private in torch, stable for years; without it, None.
        try:
            from torch.utils.data._utils import worker as torch_worker
            torch_worker._worker_info = torch_worker.WorkerInfo(id=worker_id, num_workers=num_workers,
                                                                seed=worker_id, dataset=self.dataset)
        except Exception:
            pass
        if self.worker_init_fn is not None:
            self.worker_init_fn(worker_id)


class RawSamples:
    """The transform's own inputs: each sample fetched once with the transform
    replaced by a recorder of its argument. Whatever part of the example the
    dataset hands its transform (the whole example, or torchvision's image of
    an `(image, target)` pair, once or several times per item) is what the
    transform stage is fed."""

    def __init__(self, dataset):
        self.dataset = dataset

    def __call__(self, indices: list) -> list:
        inputs: list = []

        def record(x):
            inputs.append(x)
            return x

        saved = self.dataset.transform
        self.dataset.transform = record
        try:
            for i in indices:
                self.dataset[i]
        finally:
            self.dataset.transform = saved
        return inputs


def chains_for_loader(loader: Any, num_inputs: int) -> list[tuple[list[Stage], Any]]:
    from torch.utils.data import IterableDataset

    dataset = loader.dataset
    batch_size = loader.batch_size or 1
    collate = loader.collate_fn
    start = WorkerStart(dataset, loader.worker_init_fn)

    def worker_stage(name, fn):
        return Stage(name, fn, process_init=start, process_intra_op_threads=WorkerStart.THREADS)

    if isinstance(dataset, IterableDataset):
        return [([regroup("batch_size", batches_of(batch_size, loader.drop_last)), worker_stage("collate_fn", collate)],
                 itertools.islice(iter(dataset), num_inputs))]
    index_batches = _index_batches(loader, num_inputs)
    indices = [i for batch in index_batches for i in batch]
    regroup_as_loader = regroup("batch_size", SplitLike([len(b) for b in index_batches]))
    chains = [([worker_stage("__getitem__", GetItem(dataset)), regroup_as_loader, worker_stage("collate_fn", collate)],
               indices)]
    transform = getattr(dataset, "transform", None)
    if callable(transform):
        chains.append(([regroup("raw samples", RawSamples(dataset)), worker_stage("transform", transform)], indices))
    chains.append(([worker_stage("batch", WholeBatch(dataset, collate))], index_batches))
    return chains


def _index_batches(loader: Any, num_inputs: int) -> list[list]:
    """The loader's own batches of indices (its batch_sampler: batch_size,
    drop_last or a custom sampler), until num_inputs indices; without
    auto-collation (batch_size=None) each index is its own batch."""
    if loader.batch_sampler is None:
        return [[i] for i in itertools.islice(iter(loader.sampler), num_inputs)]
    out, total = [], 0
    for batch in loader.batch_sampler:
        out.append(list(batch))
        total += len(batch)
        if total >= num_inputs:
            break
    return out


class SplitLike:
    """Regroup fetched samples into the loader's batch sizes (errors dropped
    samples, so the last batches may come out shorter)."""

    def __init__(self, sizes: list[int]):
        self.sizes = sizes

    def __call__(self, items: list) -> list:
        out, start = [], 0
        for size in self.sizes:
            if start >= len(items):
                break
            out.append(items[start:start + size])
            start += size
        return out
