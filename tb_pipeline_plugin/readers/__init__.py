"""Reading side of pipeline statistics: our JSONL records, SPDL stage stats
captured through the launcher's hooks, and Composer Chrome traces, decoded
into one set of columnar tables (`PipelineTables`); diagnostic-mode results
(`readers.diagnostic`). Imports formats/ and trace/."""
from .run import find_pipeline_sources, load_pipeline_run
from .tables import PipelineTables

__all__ = ["PipelineTables", "find_pipeline_sources", "load_pipeline_run"]
