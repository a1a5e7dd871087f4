#include "graph/graph.h"

namespace qvl::graph {

const char* op_name(OpKind op) {
    switch (op) {
        case OpKind::kEmbed:
            return "embed";
        case OpKind::kPatchEmbed:
            return "patch_embed";
        case OpKind::kMatmul:
            return "matmul";
        case OpKind::kMatmulGated:
            return "matmul_gated";
        case OpKind::kLayerNorm:
            return "layer_norm";
        case OpKind::kRmsNorm:
            return "rms_norm";
        case OpKind::kRope:
            return "rope";
        case OpKind::kAttention:
            return "attention";
        case OpKind::kStoreKv:
            return "store_kv";
        case OpKind::kAdd:
            return "add";
        case OpKind::kAddRows:
            return "add_rows";
        case OpKind::kScatterRows:
            return "scatter_rows";
        case OpKind::kCount:
            break;
    }
    return "?";
}

int Graph::root_of(int id, std::ptrdiff_t* offset) const {
    std::ptrdiff_t off = 0;
    while (tensors[id].kind == TensorKind::kView) {
        off += tensors[id].view_offset;
        id = tensors[id].parent;
    }
    *offset = off;
    return id;
}

}  // namespace qvl::graph
