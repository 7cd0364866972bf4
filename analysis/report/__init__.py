"""What a report says, decided without any rendering: the summary page (question, answer per group or shard,
where the numbers come from), the filters that apply, and tables with human column titles.

:mod:`dashboard.report` renders these documents as HTML and PDF; nothing here imports Streamlit or a layout
library, so the content is tested on its own.
"""
