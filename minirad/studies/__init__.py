"""Case studies of randomized AD: applications built on minirad, never imported by its core."""
