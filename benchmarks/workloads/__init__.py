"""The workloads of the benchmark suite, one module each, in table order.

Every module defines KEY ("W1"), TITLE, SIZES ({"full": ..., "tiny": ...}) and
`build(size="full", libs=None) -> harness.Workload`; `libs` picks the contenders besides
NumPy among ("mytorch", "jax", "torch") (None: mytorch and every installed one).
"""

from benchmarks.workloads import (
    w1_mlp_sgd,
    w2_dispatch,
    w3_first_call,
    w4_elementwise,
    w5_per_example_grads,
    w6_attention,
    w7_rnn_scan,
    w8_while_grad,
    w9_train_step,
    w10_data_parallel,
    w11_grad_bucketing,
    w12_fused_sums,
)

WORKLOADS = {m.KEY: m for m in (w1_mlp_sgd, w2_dispatch, w3_first_call, w4_elementwise,
                                w5_per_example_grads, w6_attention, w7_rnn_scan, w8_while_grad,
                                w9_train_step, w10_data_parallel, w11_grad_bucketing,
                                w12_fused_sums)}
