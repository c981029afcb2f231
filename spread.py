p='/work/main/book/synthesis/side-by-side.md'; s=open(p).read()
a='''Each column is the median of the repeats; the min-max ranges are in the dataset (`scale.summary()`).'''
assert a in s
s=s.replace(a,'''```{code-cell} ipython3
:tags: [remove-cell]
df = scale.df
cost = df[df.ok].groupby(["server", "mode", "connections", "pipeline", "work_ms"]).server_cpu_us_per_req
out = df.assign(cpu_vs_median=df.server_cpu_us_per_req / cost.transform("median"))[df.outlier]
glue("sx_outliers", f"{len(out)}", display=False)
glue("sx_out_bound", f"{int(out.generator_bound.sum())}", display=False)
glue("sx_out_noisy", f"{int(out.noisy.sum())}", display=False)
moved = ((out.cpu_vs_median - 1).abs() >= 0.2)
glue("sx_out_cpu", f"{int(moved.sum())}", display=False)
```

Each column is the median of the repeats; the min-max ranges are in the dataset (`scale.summary()`).
The harness flagged {glue:text}`sx_outliers` of the {glue:text}`sx_runs` runs whose requests per second were more than 20 % from their point's median.
{glue:text}`sx_out_bound` of them were generator-bound (their rate is `wrk`'s), {glue:text}`sx_out_noisy` ran while something beside the server and `wrk` used more than a quarter of a core (at thousands of tasks, mostly the harness's own sampler), and in {glue:text}`sx_out_cpu` the server's own CPU per request moved by 20 % or more with the rate: the request cost more, or less, in that repeat, the drift between runs that {doc}`../method/measuring` describes.
That is why this chapter quotes medians of three repeats and compares servers within the run; the flagged repeats are in `scale.df` (column `outlier`), each with its raw output.''')
open(p,'w').write(s)
