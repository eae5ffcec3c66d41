"""Pipeline statistics of one run: step split, input-bound verdict, stages, the DataLoader part and GIL-bound stages that limit loading, groups pooled."""
