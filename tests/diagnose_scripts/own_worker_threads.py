"""A user's training script whose DataLoader workers set their own intra-op
threads in worker_init_fn (as torch's docs suggest for worker set-up), and
check that they run as DataLoader workers (get_worker_info)."""
import torch
from torch.utils.data import DataLoader, Dataset, get_worker_info

OWN_THREADS = 2


class Small(Dataset):
    def __len__(self):
        return 256

    def __getitem__(self, i):
        return torch.full((64,), float(i)).sin()


def init_worker(worker_id):
    info = get_worker_info()
    if info is None or info.id != worker_id or not 0 <= worker_id < info.num_workers:
        raise RuntimeError(f"not run as DataLoader worker {worker_id}: {info}")
    torch.set_num_threads(OWN_THREADS)


if __name__ == "__main__":
    loader = DataLoader(Small(), batch_size=16, num_workers=2, worker_init_fn=init_worker)
    for batch in loader:
        batch.sum()
    print("TRAINED")
