"""A 2022-style model module that reads its training users through a PyTorch ``DataLoader``
with a worker process; with the spawn start method the worker imports this module afresh
(one worker: each costs an import of PyTorch, and one shows what every one does)."""

import torch
from reclist.abstractions import RecModel
from torch.utils.data import DataLoader, Dataset


class UserIds(Dataset):
    def __init__(self, users):
        self.users = list(users)

    def __len__(self):
        return len(self.users)

    def __getitem__(self, i):
        return torch.tensor(self.users[i])


class LoaderModel(RecModel):
    def __init__(self, top_k=3):
        super().__init__()
        self.top_k = top_k

    def train(self, train_df, **kwargs):
        self.top = train_df["track_id"].value_counts().index[: self.top_k].to_list()
        loader = DataLoader(UserIds(sorted(train_df["user_id"].unique())), batch_size=2,
                            num_workers=1)
        self.seen = sorted(int(u) for batch in loader for u in batch)

    def predict(self, user_ids):
        raise NotImplementedError
