"""The provider's vocabulary: the Instance as it reads it, the chart's settings, the names it derives
and the kinds it writes."""
