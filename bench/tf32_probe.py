"""Is a conv network's compiled-vs-eager difference TF32 rounding? Relative error of
torch.compile against eager for a timm model with cuDNN's TF32 on (the default) and off.
usage (GPU host): python bench/tf32_probe.py [model] [batch]"""

import sys

import timm
import torch


def rel_err(model, x) -> float:
    torch._dynamo.reset()
    with torch.no_grad():
        ref = model(x)
        got = torch.compile(model)(x)
    return float((got.double() - ref.double()).abs().max() / ref.double().abs().max())


name = sys.argv[1] if len(sys.argv) > 1 else "resnet18"
batch = int(sys.argv[2]) if len(sys.argv) > 2 else 8
torch.manual_seed(0)
model = timm.create_model(name, pretrained=False).cuda().eval()
x = torch.randn(batch, 3, 224, 224, device="cuda")
for tf32 in (True, False):
    torch.backends.cudnn.allow_tf32 = tf32
    print(f"{name} batch {batch}: cudnn.allow_tf32={tf32}: compile vs eager relative error "
          f"{rel_err(model, x):.2e}")
