#!/usr/bin/python3
"""Data-parallel forward passes of the ragged encoder layer
(examples/python/encoder_layer.py, attention = dccc's CUDA `mha` as a
PyTorch custom operator) through PyTorch's own engine: one process per GPU
under torchrun, an NCCL process group, DistributedDataParallel over the
layer, each rank its own ragged batch. Rank 0 then runs every rank's batch
alone on its GPU (the single-GPU result) and each rank's output must match
it, and PyTorch's SDPA on the padded batch.

    dccc --target=cuda examples/mha.toy -o /tmp/mha.so
    torchrun --nproc_per_node=2 bench/python/ddp_encoder.py --lib /tmp/mha.so

Prints one line per rank and `ddp encoder check: OK` (exit 0) or FAILED
(exit 1). Run by build-gpu/run_gpu.sh on a machine with two GPUs or more.
"""
import argparse
import os
import sys

import torch
import torch.distributed as dist

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path[:0] = [os.path.join(ROOT, "python"), os.path.join(ROOT, "examples", "python")]
import dccc  # noqa: E402
import encoder_layer  # noqa: E402


def batch(rank, device):
    g = torch.Generator().manual_seed(100 + rank)
    lens = torch.randint(1, 40, (3 + rank,), generator=g).tolist()
    seqs = [torch.randn(n, 64, generator=g).to(device) for n in lens]
    return seqs


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", required=True, help="mha.so built with dccc --target=cuda")
    a = ap.parse_args()
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    local = int(os.environ.get("LOCAL_RANK", rank))
    torch.cuda.set_device(local)
    device = torch.device("cuda", local)
    lib = dccc.load(a.lib, torch_namespace="dccc")
    torch.manual_seed(0)  # the same weights on every rank (DDP also broadcasts rank 0's)
    layer = encoder_layer.RaggedEncoderLayer(lib).to(device).eval()
    # inputs are on this rank's GPU already: no device_ids, so DDP leaves them (nested) as they are
    ddp = torch.nn.parallel.DistributedDataParallel(layer)
    seqs = batch(rank, device)
    x = torch.nested.nested_tensor(seqs, layout=torch.jagged)
    with torch.no_grad():
        out = ddp(x).values().cpu()
    outs = [None] * world
    dist.all_gather_object(outs, out)
    ok = True
    if rank == 0:
        for r in range(world):
            rs = batch(r, device)
            with torch.no_grad():
                single = layer(torch.nested.nested_tensor(rs, layout=torch.jagged)).values().cpu()
                ref = torch.cat(encoder_layer.reference(layer, rs)).cpu()
            d_single = (outs[r] - single).abs().max().item()
            d_ref = (outs[r] - ref).abs().max().item()
            good = d_single <= 1e-6 and d_ref < 2e-4
            ok &= good
            print(f"rank {r} ({sum(s.shape[0] for s in rs)} tokens in {len(rs)} sequences): max |ddp - single GPU| "
                  f"= {d_single:.2e}, max |ddp - SDPA| = {d_ref:.2e} {'ok' if good else 'FAILED'}", flush=True)
        print(f"ddp encoder check: {'OK' if ok else 'FAILED'} ({world} ranks)", flush=True)
    flag = torch.tensor([1 if ok else 0], device=device)
    dist.broadcast(flag, 0)
    dist.destroy_process_group()
    sys.exit(0 if flag.item() else 1)


if __name__ == "__main__":
    main()
