"""A user's PyTorch training script whose collate_fn does heavy torch work
(torch.stack of large images, then per-channel normalisation of the whole
batch): torch runs it on its intra-op thread pool. Nothing in it knows about
diagnostic mode."""
import torch
from torch.utils.data import DataLoader, Dataset

IMAGE = (3, 96, 96)
BATCH = 32


class Images(Dataset):
    """Decoded images, as a cache would hold them: __getitem__ is cheap, the batch work is in collate_fn."""

    def __init__(self):
        generator = torch.Generator().manual_seed(0)
        self.images = torch.rand((16, *IMAGE), generator=generator)

    def __len__(self):
        return 1024

    def __getitem__(self, i):
        return self.images[i % len(self.images)], i % 10


def stack_and_normalise(samples):
    images = torch.stack([image for image, _ in samples])
    mean = images.mean(dim=(0, 2, 3), keepdim=True)
    std = images.std(dim=(0, 2, 3), keepdim=True)
    images = (images - mean) / (std + 1e-6)
    images = torch.nn.functional.avg_pool2d(images, 3, stride=1, padding=1)  # a blur, as an augmentation would
    return images, torch.tensor([target for _, target in samples])


if __name__ == "__main__":
    loader = DataLoader(Images(), batch_size=BATCH, collate_fn=stack_and_normalise, num_workers=0)
    model = torch.nn.Conv2d(3, 4, 3)
    for images, targets in loader:
        model(images).sum().backward()
    print("TRAINED")
