"""PyTorch's float32 training ops at the shapes of bench/training_ops_bench.cc (one base-model step
of --tokens target tokens), on the same GPU, as the peer for xlate's CUDA training ops: the
backward of the linear layers, of LayerNorm, of attention, label-smoothed cross entropy forward
and backward, and Adam over 65M parameters (torch.optim.Adam, fused). TF32 off, as in xlate.
Prints one line per op: median milliseconds of CUDA-event-timed repetitions.
usage: python3 bench/gpu/torch_training_ops.py [--tokens 25000] [--repeats 20]
"""
import argparse

import torch

SENTENCE, CHANNELS, INNER, HEADS, VOCABULARY, PARAMETERS = 25, 512, 2048, 8, 37000, 65_000_000


def median_ms(step, repeats):
    for _ in range(3):
        step()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        step()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return sorted(times)[len(times) // 2]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokens", type=int, default=25000)
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    rows = args.tokens // SENTENCE * SENTENCE
    cuda = dict(device="cuda", dtype=torch.float32)
    results = {}

    for outputs, inputs in ((INNER, CHANNELS), (CHANNELS, INNER), (VOCABULARY, CHANNELS)):
        x = torch.randn(rows, inputs, **cuda, requires_grad=True)
        layer = torch.nn.Linear(inputs, outputs).cuda()
        out = layer(x)
        dout = torch.randn_like(out)
        results[f"linear_backward {outputs}x{inputs}"] = median_ms(
            lambda: torch.autograd.grad(out, (x, layer.weight, layer.bias), dout,
                                        retain_graph=True), args.repeats)
        del x, layer, out, dout

    x = torch.randn(rows, CHANNELS, **cuda, requires_grad=True)
    norm = torch.nn.LayerNorm(CHANNELS).cuda()
    out = norm(x)
    dout = torch.randn_like(out)
    results["layer_norm_backward"] = median_ms(
        lambda: torch.autograd.grad(out, (x, norm.weight, norm.bias), dout, retain_graph=True),
        args.repeats)

    sentences = rows // SENTENCE
    shape = (sentences, HEADS, SENTENCE, CHANNELS // HEADS)
    q, k, v = (torch.randn(shape, **cuda, requires_grad=True) for _ in range(3))
    # The math path: explicit probabilities, as xlate's training attention keeps them.
    probs = torch.softmax(q @ k.transpose(-1, -2) / (CHANNELS // HEADS) ** 0.5, dim=-1)
    out = probs @ v
    dout = torch.randn_like(out)
    results["attention_backward"] = median_ms(
        lambda: torch.autograd.grad(out, (q, k, v), dout, retain_graph=True), args.repeats)
    del q, k, v, probs, out, dout

    logits = (3 * torch.randn(rows, VOCABULARY, **cuda)).requires_grad_()
    targets = torch.randint(0, VOCABULARY, (rows,), device="cuda")

    def cross_entropy():
        loss = torch.nn.functional.cross_entropy(logits, targets, label_smoothing=0.1,
                                                 reduction="sum")
        torch.autograd.grad(loss, logits)
    results["cross_entropy forward+backward"] = median_ms(cross_entropy, args.repeats)
    del logits

    weights = torch.nn.Parameter(torch.randn(PARAMETERS, **cuda))
    weights.grad = 0.01 * torch.randn_like(weights)
    adam = torch.optim.Adam([weights], lr=1e-4, betas=(0.9, 0.98), eps=1e-9, fused=True)

    def clip_and_adam():
        torch.nn.utils.clip_grad_norm_([weights], 1e9)
        adam.step()
    results["clip_and_adam 65M"] = median_ms(clip_and_adam, args.repeats)

    print(f"PyTorch {torch.__version__}, {torch.cuda.get_device_name()}, {rows} tokens, float32")
    for name, ms in results.items():
        print(f"{name:34s} {ms:9.3f} ms")


if __name__ == "__main__":
    main()
