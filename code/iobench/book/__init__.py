"""What the pages call: plots and their looks, flame graphs, a reader's own runs beside the book's (mine),
the small live demos (lab) and the syllabus. Reads datasets through the registry; the top layer."""
