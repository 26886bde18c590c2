"""Data-stall analysis for tf.data and Keras on stock TensorFlow: DS-Analyzer's differential phases and what-if,
and Lobster's thread planning (guide: docs/analysis.md).

    >>> pipeline = tfliquid.analysis.pcr_pipeline("train-pcr/", preprocess, batch_size=64)
    >>> report = tfliquid.analysis.analyze(model, pipeline)   # or: tfliquid analyze SCRIPT
    >>> print(report)                                          # rates, stalls, per-op table, what-if, advice
    >>> plan = tfliquid.analysis.plan_threads(pipeline)        # prep threads at their peak, the rest to reads
"""

from tfliquid.analysis.analyze import analyze
from tfliquid.analysis.pipeline import InputPipeline, file_pipeline, pcr_pipeline
from tfliquid.analysis.report import Report
from tfliquid.analysis.threads import ThreadPlan, plan_threads
from tfliquid.analysis.whatif import Change, Measurements, predict

__all__ = [
    "Change",
    "InputPipeline",
    "Measurements",
    "Report",
    "ThreadPlan",
    "analyze",
    "file_pipeline",
    "pcr_pipeline",
    "plan_threads",
    "predict",
]
