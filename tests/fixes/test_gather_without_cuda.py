"""fairseq's all_gather_list (logging outputs that cannot be summed) works on CPU processes."""

import socket

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from fairseq.distributed import utils as distributed_utils

import fairseq_struct.plugin  # noqa: F401  (applies the fix)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _gather(rank: int, port: int, results) -> None:
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    gathered = distributed_utils.all_gather_list(
        [("q%d" % rank, 1.5 * rank, "metin ş", ["altın"])], max_size=16
    )
    results[rank] = gathered
    dist.destroy_process_group()


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA present: fairseq's own path is used")
def test_python_objects_are_gathered_from_every_cpu_process_in_rank_order():
    with mp.Manager() as manager:
        results = manager.dict()
        mp.spawn(_gather, args=(_free_port(), results), nprocs=2, join=True)
        expected = [[("q0", 0.0, "metin ş", ["altın"])], [("q1", 1.5, "metin ş", ["altın"])]]
        assert results[0] == expected and results[1] == expected
