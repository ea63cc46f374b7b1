import csv,sys,statistics as st
for d in sys.argv[1:]:
    rows=list(csv.DictReader(open(d+'/metrics.csv')))
    sims=[float(r['simulations_per_s']) for r in rows]
    ev=[float(r['evaluations_per_s']) for r in rows]
    bf=[float(r['batch_fill']) for r in rows]
    q=st.quantiles(sims,n=4)
    print(f"{d}: iterations {len(rows)} median sims/s {st.median(sims):.0f} (quartiles {q[0]:.0f}-{q[2]:.0f}) median evals/s {st.median(ev):.0f} median batch {256*st.median(bf):.1f} samples {rows[-1]['total_samples']} steps {rows[-1]['total_steps']} elapsed {rows[-1]['elapsed_s']}")
