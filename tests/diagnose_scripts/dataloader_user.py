"""A user's PyTorch training script with a slow __getitem__ and a slow
collate_fn; nothing in it knows about diagnostic mode."""
import time

import torch
from torch.utils.data import DataLoader, Dataset

READ_S = 0.004


def normalize(sample):
    return (sample - sample.mean()) / (sample.std() + 1.0)


class SlowDataset(Dataset):
    """torchvision style: `transform` is an attribute applied to the image of
    an (image, target) pair in __getitem__."""

    def __init__(self, transform=None):
        self.transform = transform

    def __len__(self):
        return 512

    def __getitem__(self, i):
        time.sleep(READ_S)  # a slow storage read: waits, GIL released
        sample = torch.full((16,), float(i))
        if self.transform is not None:
            sample = self.transform(sample)
        return sample, i % 10


def slow_collate(samples):
    s = 0
    for i in range(40_000):  # pure-Python work per batch: holds the GIL
        s += i * i
    images, targets = zip(*samples)
    return torch.stack(images), torch.tensor(targets)


if __name__ == "__main__":
    loader = DataLoader(SlowDataset(transform=normalize), batch_size=8, collate_fn=slow_collate, num_workers=0)
    model = torch.nn.Linear(16, 1)
    for images, targets in loader:
        model(images).sum().backward()
    print("TRAINED")
