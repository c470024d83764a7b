"""Surge's buffers as NumPy, PyTorch or JAX arrays through DLPack, without a copy, and actions back."""
import numpy as np

ARRAY_KINDS = ("numpy", "torch", "jax")


class NumpyArrays:
    name = "numpy"
    fresh_each_step = False  # the same array objects are returned at every step

    def wrap(self, exported):
        try:
            return np.from_dlpack(exported)
        except (BufferError, TypeError, RuntimeError):  # a NumPy before 1.25 lacks DLPack's bool
            if not exported.is_bool:
                raise
            return np.from_dlpack(exported.as_uint8()).view(np.bool_)

    def copy(self, array):
        return array.copy()

    def to_host(self, array):
        return np.asarray(array)

    def convert(self, actions, discrete):
        array = np.asarray(actions)
        if not _convertible(array.dtype.kind, discrete):
            return None
        dtype = np.int32 if discrete else np.float32
        if not array.flags.writeable:  # DLPack cannot export a read-only array: converted once instead
            return np.array(array, dtype=dtype, order="C", copy=True)
        return np.ascontiguousarray(array, dtype=dtype)


class TorchArrays:
    name = "torch"
    fresh_each_step = False

    def __init__(self):
        import torch

        self.torch = torch

    def wrap(self, exported):
        try:
            return self.torch.utils.dlpack.from_dlpack(exported)
        except (RuntimeError, TypeError, BufferError):  # a torch without DLPack's bool takes the bytes
            if not exported.is_bool:
                raise
            return self.torch.utils.dlpack.from_dlpack(exported.as_uint8()).view(self.torch.bool)

    def copy(self, array):
        return array.clone()

    def to_host(self, array):
        return array.cpu().numpy()

    def convert(self, actions, discrete):
        torch = self.torch
        tensor = actions if isinstance(actions, torch.Tensor) else torch.as_tensor(np.asarray(actions))
        tensor = tensor.detach()  # actions straight from a policy may carry gradients, which DLPack refuses
        kind = "f" if tensor.is_floating_point() else "c" if tensor.is_complex() else "b" if tensor.dtype == torch.bool else "i"
        if not _convertible(kind, discrete):
            return None
        return tensor.to(torch.int32 if discrete else torch.float32).contiguous()


class JaxArrays:
    name = "jax"
    fresh_each_step = True  # JAX arrays are immutable by contract: a new one (same memory) per step

    def __init__(self):
        import jax
        import jax.numpy as jnp

        self.jax, self.jnp = jax, jnp

    def wrap(self, exported):
        return self.jax.dlpack.from_dlpack(exported)

    def copy(self, array):
        return self.jnp.array(array, copy=True)

    def to_host(self, array):
        return np.asarray(array)

    def convert(self, actions, discrete):
        array = self.jnp.asarray(actions)
        if not _convertible(array.dtype.kind, discrete):
            return None
        return array.astype(self.jnp.int32 if discrete else self.jnp.float32)


def _convertible(kind, discrete):
    """Integers become int32 actions, integers and floats float32 ones; nothing else is guessed at."""
    return kind in "iu" if discrete else kind in "iuf"


def array_kind(name):
    if name == "numpy":
        return NumpyArrays()
    if name == "torch":
        return TorchArrays()
    if name == "jax":
        return JaxArrays()
    raise ValueError(f"unknown array kind {name!r}: use one of {', '.join(ARRAY_KINDS)}")
