"""Building blocks: role-binding relative-position attention and the layers that use it."""
