import csv, statistics as st, sys
for path in sys.argv[1:]:
    rows = list(csv.DictReader(open(path)))
    r2 = [r for r in rows if int(r['iteration']) >= 2]
    f = lambda k: [float(r[k]) for r in r2]
    sims = sorted(f('simulations_per_s'))
    q = st.quantiles(sims, n=4)
    sp = sum(float(r['games'])/float(r['games_per_s']) for r in rows if float(r['games_per_s'])>0)
    last = rows[-5:]
    ends = {}
    for k in ['end_checkmate','end_repetition','end_length_cap','end_perpetual_check','end_perpetual_chase','end_no_legal_moves','end_no_capture_limit']:
        ends[k] = st.mean(float(r[k]) for r in last)
    print(path)
    print(' iterations', rows[-1]['iteration'], 'elapsed', rows[-1]['elapsed_s'], 'samples', rows[-1]['total_samples'], 'steps', rows[-1]['total_steps'])
    print(' median sims/s %.0f (%.0f-%.0f)' % (st.median(sims), q[0], q[2]))
    print(' median train samples/s %.0f' % st.median(f('train_samples_per_s')))
    print(' selfplay s %.0f share %.2f' % (sp, sp/float(rows[-1]['elapsed_s'])))
    print(' last5', {k: round(v,3) for k,v in ends.items()}, 'len %.0f' % st.mean(float(r['mean_game_length']) for r in last))
    print(' heldout material loss last5 %.3f' % st.mean(float(r['heldout_material_loss']) for r in last))
