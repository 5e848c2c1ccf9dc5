// SPDX-License-Identifier: GPL-3.0-or-later
//
// Flamenco job type "Chain IK Bake": one Blender task per shot of a Chain IK shot list
// (the TOML file tools/bake_shots.py reads; format: docs/shot_list.md).
// Install: copy this file into the `scripts` folder next to flamenco-manager, restart it.
//
// A job compiler cannot read files, so the submitting Blender reads the shot list
// (the hidden `shots_json` setting, evaluated by the Flamenco add-on at submission) and
// this script checks it, resolves paths against the list's folder and authors the tasks.
// Each task runs cli.py: `{blender} {blenderArgs} shot.blend --python cli.py -- ...`.

const JOB_TYPE = {
    label: "Chain IK Bake",
    description: "Bake Chain IK chains to keys, one Blender task per shot of a shot list",
    settings: [
        { key: "shot_list", type: "string", subtype: "file_path", required: true, visible: "submission",
          description: "The shot list (.toml), on storage the workers share" },
        { key: "cli_path", type: "string", subtype: "file_path", required: true, visible: "submission",
          // The installed extension's cli.py (extensions load as bl_ext.<repository>.chain_ik).
          eval: "next((__import__('os').path.join(__import__('os').path.dirname(m.__file__), 'cli.py') " +
                "for n, m in list(__import__('sys').modules.items()) " +
                "if n.startswith('bl_ext.') and n.endswith('.chain_ik')), '')",
          description: "cli.py of the Chain IK extension, as the workers see it" },
        { key: "max_error", type: "float", default: 0.0, visible: "submission",
          description: "Fail a shot whose playback misses by more (0: no bound; a shot's own max_error wins)" },
        { key: "shots_json", type: "string", required: true, visible: "hidden",
          eval: "__import__('json').dumps(__import__('tomllib').loads(Path(abspath(settings.shot_list)).read_text()))",
          description: "The shot list's content, read at submission" },
    ],
};

const SHOT_KEYS = ["name", "blend", "output", "armature", "frames", "step", "interpolation", "reduce",
                   "max_error", "chains"];
const CHAIN_KEYS = ["chain", "target", "target_bone", "pole", "pole_bone", "pole_angle", "method"];
const INTERPOLATIONS = ["BEZIER", "LINEAR", "CONSTANT"];

function compileJob(job) {
    const settings = job.settings;
    const shots = readShots(settings);
    for (const shot of shots) {
        const task = author.Task(`bake-${shot.name}`, "blender");
        task.addCommand(author.Command("blender-render", {
            exe: "{blender}",
            exeArgs: "{blenderArgs}",
            argsBefore: [],
            blendfile: shot.blend,
            // --python-exit-code: a Python error fails the task (Blender would exit 0).
            args: ["--python-exit-code", "1", "--python", settings.cli_path, "--"].concat(cliArguments(shot, settings)),
        }));
        job.addTask(task);
    }
    print(`Chain IK Bake: ${shots.length} shot(s) from ${settings.shot_list}`);
}

// The shots of the list, defaults applied and paths resolved; throws one message naming every problem.
function readShots(settings) {
    let data;
    try {
        data = JSON.parse(settings.shots_json);
    } catch (e) {
        throw `Chain IK Bake: the shot list could not be read (${e})`;
    }
    const problems = [];
    for (const key of Object.keys(data)) {
        if (key !== "defaults" && key !== "shots") problems.push(`unknown top-level key '${key}'`);
    }
    const defaults = data.defaults || {};
    const entries = Array.isArray(data.shots) ? data.shots : [];
    if (!entries.length) problems.push("no shots: add [[shots]] tables");
    const base = path.dirname(settings.shot_list);
    const names = {}, outputs = {};
    const shots = [];
    entries.forEach((entry, i) => {
        const shot = Object.assign({}, defaults, entry);
        const where = `shot ${i + 1}` + (typeof shot.name === "string" ? ` ('${shot.name}')` : "");
        const before = problems.length;
        for (const key of Object.keys(shot)) {
            if (SHOT_KEYS.indexOf(key) < 0) problems.push(`${where}: unknown key '${key}'`);
        }
        for (const key of ["blend", "output", "armature"]) {
            if (typeof shot[key] !== "string" || !shot[key]) problems.push(`${where}: '${key}' is required (a string)`);
        }
        if (shot.output && !/\.blend$/.test(shot.output)) problems.push(`${where}: output must be a .blend file`);
        if (shot.step !== undefined && !(Number.isInteger(shot.step) && shot.step >= 1)) {
            problems.push(`${where}: 'step' must be an integer >= 1`);
        }
        if (shot.interpolation !== undefined && INTERPOLATIONS.indexOf(shot.interpolation) < 0) {
            problems.push(`${where}: 'interpolation' must be one of ${INTERPOLATIONS.join(", ")}`);
        }
        for (const key of ["reduce", "max_error"]) {
            if (shot[key] !== undefined && !(typeof shot[key] === "number" && shot[key] >= 0)) {
                problems.push(`${where}: '${key}' must be a number >= 0`);
            }
        }
        const frames = parseFrames(shot.frames);
        if (frames === null) problems.push(`${where}: 'frames' must be "START-END" or [START, END]`);
        (Array.isArray(shot.chains) ? shot.chains : []).forEach((chain, c) => {
            const at = `${where}, chain ${c + 1}`;
            for (const key of Object.keys(chain)) {
                if (CHAIN_KEYS.indexOf(key) < 0) problems.push(`${at}: unknown key '${key}'`);
            }
            if (typeof chain.chain !== "string" || !/^.+:[1-9][0-9]*$/.test(chain.chain)) {
                problems.push(`${at}: 'chain' must be "TIP:LENGTH"`);
            }
            if (typeof chain.target !== "string" || !chain.target) problems.push(`${at}: 'target' is required`);
        });
        if (shot.chains !== undefined && !Array.isArray(shot.chains)) problems.push(`${where}: 'chains' must be a list`);
        if (problems.length > before) return;
        const name = shot.name || path.stem(shot.blend);
        const output = resolve(base, shot.output);
        if (names[name]) problems.push(`${where}: the name is already used by shot ${names[name]}`);
        if (outputs[output]) problems.push(`${where}: output ${output} is shot ${outputs[output]}'s too`);
        names[name] = names[name] || i + 1;
        outputs[output] = outputs[output] || i + 1;
        shots.push(Object.assign(shot, { name: name, blend: resolve(base, shot.blend), output: output, frames: frames }));
    });
    if (problems.length) throw `Chain IK Bake: ${settings.shot_list}: ${problems.length} problem(s):\n` + problems.join("\n");
    return shots;
}

// A path from the list, relative to the list's folder unless absolute (POSIX or Windows).
function resolve(base, p) {
    return /^([\\/]|[A-Za-z]:)/.test(p) ? p : path.join(base, p);
}

// [start, end], undefined (the file's scene range) or null (invalid); the forms tools/shot_list.py accepts.
function parseFrames(value) {
    if (value === undefined) return undefined;
    if (Number.isInteger(value)) return [value, value];
    if (Array.isArray(value) && value.length === 2 && value.every(Number.isInteger)) {
        return value[1] >= value[0] ? value : null;
    }
    const match = typeof value === "string" ? /^\s*(-?\d+)\s*(?:-\s*(-?\d+)\s*)?$/.exec(value) : null;
    if (!match) return null;
    const start = parseInt(match[1], 10), end = match[2] === undefined ? start : parseInt(match[2], 10);
    return end >= start ? [start, end] : null;
}

// cli.py's arguments for a shot: the same list tools/shot_list.py's cli_arguments() makes, plus output and bound.
function cliArguments(shot, settings) {
    const args = ["--armature", shot.armature, "--step", String(shot.step || 1),
                  "--interpolation", shot.interpolation || "BEZIER"];
    if (shot.frames) args.push(`--frames=${shot.frames[0]}-${shot.frames[1]}`);
    if (shot.reduce > 0) args.push("--reduce", pyFloat(shot.reduce));
    const chains = shot.chains || [];
    for (const chain of chains) {
        args.push("--chain", chain.chain, "--target", chain.target);
        for (const key of ["target_bone", "pole", "pole_bone", "method"]) {
            args.push("--" + key.replace("_", "-"), chain[key] || "");
        }
    }
    if (chains.some((chain) => chain.pole_angle !== undefined)) {
        for (const chain of chains) args.push(`--pole-angle=${pyFloat(chain.pole_angle || 0)}`);
    }
    const bound = shot.max_error !== undefined ? shot.max_error : settings.max_error || 0;
    if (shot.max_error !== undefined || bound > 0) args.push("--max-error", pyFloat(bound));
    // Blender saves to '<output>@' and renames: a killed task leaves no half-written output.
    args.push("--output", shot.output, "--json", shot.output.replace(/\.blend$/, ".bake.json"));
    return args;
}

// A number as Python's repr(float) writes it ("2" -> "2.0"), so both tools pass identical arguments.
function pyFloat(x) {
    const text = String(x);
    return /[.eE]/.test(text) || !isFinite(x) ? text : text + ".0";
}
