// log_softmax along the last axis through oneDNN's logsoftmax primitive.
#include "absl/strings/str_cat.h"
#include "engine/ops/cpu/cpu_ops.h"
#include "engine/ops/cpu/dnnl_context.h"

namespace xlate::cpu {

void log_softmax_forward(Tensor& out, const Tensor& inp) {
  const int64_t width = inp.dim(-1);
  using Tag = dnnl::memory::format_tag;
  const float* x = inp.data<float>();
  float* y = out.data<float>();
  // Rows are independent: chunks keep the primitives' row counts few (for_row_chunks).
  for_row_chunks(inp.numel() / width, [&](int64_t first, int64_t rows) {
    const dnnl::primitive primitive =
        cached_primitive(absl::StrCat("logsoftmax:", rows, ":", width), [&] {
          const dnnl::memory::desc data({rows, width}, dnnl::memory::data_type::f32, Tag::ab);
          const dnnl::logsoftmax_forward::desc description(dnnl::prop_kind::forward_inference,
                                                           data, 1);
          return dnnl::logsoftmax_forward(dnnl::logsoftmax_forward::primitive_desc(
              description, scratchpad_attributes(), dnnl_engine()));
        });
    execute(primitive, {{DNNL_ARG_SRC, wrap_f32({rows, width}, Tag::ab, x + first * width)},
                        {DNNL_ARG_DST, wrap_f32({rows, width}, Tag::ab, y + first * width)}});
  });
}

}  // namespace xlate::cpu
