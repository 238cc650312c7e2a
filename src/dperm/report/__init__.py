"""The report layer: experiment summaries and tables (:mod:`.tables`), figures (:mod:`.figures`,
:mod:`.paper_figures`) and the captions every reader must see (:mod:`.captions`). Paper plugins
build their own tables and figures from these pieces."""
