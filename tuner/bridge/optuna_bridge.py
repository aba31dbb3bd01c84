#!/usr/bin/python3
"""Ask-and-tell bridge to Optuna for syspilot's baseline tuners: one JSON object per line on
stdin, one answer per line on stdout. Requests:
  {"op": "init", "sampler": "tpe"|"cmaes", "seed": 1,
   "params": [{"name": "OMP_NUM_THREADS", "values": ["1", "2"], "ordinal": true}, ...]}
  {"op": "ask"}                                   -> {"trial": 0, "config": {"OMP_NUM_THREADS": "2"}}
  {"op": "tell", "trial": 0, "value": 1.25}       -> {"ok": true}   (lower is better)
  {"op": "tell", "trial": 0, "failed": true}      -> {"ok": true}
  {"op": "add", "config": {...}, "value": 1.25}   -> {"ok": true}   (a trial measured before a resume;
                                                     "failed": true instead of a value)
Ordinal controls are searched as an integer index into their values (CMA-ES needs numbers);
the others as categorical. Errors answer {"error": "..."} and the bridge goes on."""
import json
import sys
import warnings


def main():
    warnings.simplefilter("ignore")
    try:
        import optuna
    except ImportError as e:  # Debian package python3-optuna missing
        print(json.dumps({"error": "python3-optuna is not installed: %s" % e}), flush=True)
        return 3
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    study = None
    params = []
    trials = {}
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            req = json.loads(line)
            op = req.get("op")
            if op == "init":
                params = req["params"]
                seed = int(req.get("seed", 1))
                if req.get("sampler") == "cmaes":
                    # Categorical controls fall back to independent random sampling.
                    sampler = optuna.samplers.CmaEsSampler(seed=seed, warn_independent_sampling=False)
                else:
                    sampler = optuna.samplers.TPESampler(seed=seed)
                study = optuna.create_study(direction="minimize", sampler=sampler)
                answer = {"ok": True, "optuna": optuna.__version__}
            elif op == "ask":
                trial = study.ask()
                config = {}
                for p in params:
                    values = p["values"]
                    if p.get("ordinal") and len(values) > 1:
                        i = trial.suggest_int(p["name"], 0, len(values) - 1)
                    elif len(values) > 1:
                        i = values.index(trial.suggest_categorical(p["name"], values))
                    else:
                        i = 0
                    config[p["name"]] = values[i]
                trials[trial.number] = trial
                answer = {"trial": trial.number, "config": config}
            elif op == "add":
                dists, values = {}, {}
                for p in params:
                    vals = p["values"]
                    if len(vals) < 2:
                        continue
                    v = req["config"][p["name"]]
                    if p.get("ordinal"):
                        dists[p["name"]] = optuna.distributions.IntDistribution(0, len(vals) - 1)
                        values[p["name"]] = vals.index(v)
                    else:
                        dists[p["name"]] = optuna.distributions.CategoricalDistribution(vals)
                        values[p["name"]] = v
                if req.get("failed"):
                    t = optuna.trial.create_trial(params=values, distributions=dists,
                                                  state=optuna.trial.TrialState.FAIL)
                else:
                    t = optuna.trial.create_trial(params=values, distributions=dists, value=float(req["value"]))
                study.add_trial(t)
                answer = {"ok": True}
            elif op == "tell":
                trial = trials.pop(int(req["trial"]))
                if req.get("failed"):
                    study.tell(trial, state=optuna.trial.TrialState.FAIL)
                else:
                    study.tell(trial, float(req["value"]))
                answer = {"ok": True}
            else:
                answer = {"error": "unknown op %r" % op}
        except Exception as e:  # a bad request must not end the session
            answer = {"error": "%s: %s" % (type(e).__name__, e)}
        print(json.dumps(answer), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
