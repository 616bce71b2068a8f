/* cuda_ops.cu -- the table libc4k-cuda.so exports under C4K_CUDA_SYMBOL ("c4k_cuda_ops"). */
#include "cuda_common.cuh"

extern "C" __attribute__((visibility("default"))) const struct c4k_ops c4k_cuda_ops = {
    .name = "cuda",
    .alloc = c4k_cuda_alloc,
    .free = c4k_cuda_free,
    .upload = c4k_cuda_upload,
    .download = c4k_cuda_download,
    .zero = c4k_cuda_zero,
    .sync = c4k_cuda_sync,
    .encoder_fwd = c4k_cuda_encoder_fwd,
    .encoder_bwd = c4k_cuda_encoder_bwd,
    .layernorm_fwd = c4k_cuda_layernorm_fwd,
    .layernorm_bwd = c4k_cuda_layernorm_bwd,
    .matmul_fwd = c4k_cuda_matmul_fwd,
    .matmul_bwd = c4k_cuda_matmul_bwd,
    .attention_fwd = c4k_cuda_attention_fwd,
    .attention_bwd = c4k_cuda_attention_bwd,
    .gelu_fwd = c4k_cuda_gelu_fwd,
    .gelu_bwd = c4k_cuda_gelu_bwd,
    .residual_fwd = c4k_cuda_residual_fwd,
    .residual_bwd = c4k_cuda_residual_bwd,
    .softmax_xent_fwd = c4k_cuda_softmax_xent_fwd,
    .softmax_xent_bwd = c4k_cuda_softmax_xent_bwd,
    .adamw = c4k_cuda_adamw,
    .scale = c4k_cuda_scale,
};
