// Registrations and shape functions of the PCR ops (kernels: scan_group_variable.cc). PCR records are read by
// the record ops (records/record_ops.h) with the item format "jpeg" (jpeg_item.cc).
#include "pcr/pcr_ops.h"

#include "absl/strings/str_cat.h"
#include "common/input_checks.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/shape_inference.h"

namespace tfliquid {

REGISTER_OP(kScanGroupDatasetOp)
    .Input("scan_group_variable: resource")
    .Input("num_scan_groups: int64")
    .Output("handle: variant")
    .Attr(absl::StrCat(kScanGroupVariableTokenAttr, ": int"))
    .SetIsStateful()  // source datasets are stateful so that constant folding leaves them alone
    .SetShapeFn(ScalarInputsAndOutputs)
    .Doc(R"doc(
One element: the value (1..num_scan_groups) of a scan group variable, read when this dataset is made. PCRDataset
makes one for each record it opens (its interleave function maps the value to the record's read), so that
assigning the variable changes the fidelity of the next records with no rebuild. The variable is the caller's
state, which a checkpoint does not hold: a restored iterator finishes the records it was reading at their
fidelity, and reads the variable anew for the records it opens. scan_group_variable_token: what
Liquid>ScanGroupVariableToken returned for that variable, which is read only in the process that built the
dataset, and only the variable itself: tf.data service ships a copy of its value at distribute() time, which
assignments would not reach, so there (another process, or the copy) this fails.
)doc");

REGISTER_OP(kScanGroupVariableTokenOp)
    .Input("variable: resource")
    .Output("token: int64")
    .SetIsStateful()
    .SetShapeFn(ScalarInputsAndOutputs)
    .Doc(R"doc(
Registers a scan group variable in this process and returns its token, the attribute scan_group_variable_token of
Liquid>ScanGroupDataset, which then reads only this variable, in this process.
)doc");

}  // namespace tfliquid
