// Graph tensors: 2-D f32 matrices [rows, cols] with a row stride, identified by index.
// Activations live in the session's arena at offsets the planner assigns; external tensors
// (inputs, KV-cache views, caller buffers) point at memory owned elsewhere. A view (rows and
// columns of another tensor) is metadata only.
#pragma once

#include <cstddef>
#include <cstdint>

namespace qvl::graph {

struct Tensor {
    int id = -1;
    bool valid() const { return id >= 0; }
};

enum class TensorKind { kActivation, kExternal, kView };

struct TensorDesc {
    const char* name = "";  // op name, e.g. "out"; the full name adds the node's scope
    int rows = 0;
    int cols = 0;
    std::ptrdiff_t stride = 0;  // elements between rows
    TensorKind kind = TensorKind::kActivation;
    float* external = nullptr;       // kExternal
    int parent = -1;                 // kView: the viewed tensor
    std::ptrdiff_t view_offset = 0;  // kView: elements from the parent's start
    std::size_t arena_offset = 0;    // kActivation: assigned by the planner
    bool keep = false;               // kActivation: stays live to the end (graph outputs)
};

}  // namespace qvl::graph
