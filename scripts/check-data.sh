#!/usr/bin/env bash
# Checks that the data the tests and benchmarks use is present under $YQ_DATA (default ../shared,
# beside the repository), and says for each missing piece exactly where it comes from.
#
#   scripts/check-data.sh            presence and sizes (fast)
#   scripts/check-data.sh --verify   also SHA-256 of every file (the hashes of ../shared/DATA.md)
#
# Exit 0 when everything is there (and verifies), 1 otherwise.  It only reads $YQ_DATA.
set -uo pipefail

verify=0
case "${1:-}" in
    "") ;;
    --verify) verify=1 ;;
    *) echo "usage: scripts/check-data.sh [--verify]" >&2; exit 2 ;;
esac

repo=$(cd "$(dirname "$0")/.." && pwd)
if [ -n "${YQ_DATA:-}" ]; then
    data=$YQ_DATA            # relative to where the script was started, like every other path
else
    data=$repo/../shared
fi
if [ ! -d "$data" ]; then
    echo "check-data: YQ_DATA folder '$data' does not exist."
    echo "  Set YQ_DATA to the data folder, or place it at $repo/../shared;"
    echo "  its layout and the origin of every file are listed below (and in DATA.md)."
fi

GH=https://github.com
FASTEST="dog-qiuqiu/Yolo-Fastest"; FASTEST_C=96a2900d163196c396e73f3fdab04ca4dd9a2f70
LITE="reu2018DL/YOLO-LITE";       LITE_C=5a96f4fd88c9bfdfdf7bd96d931d8cb8ff82effc
PJ="pjreddie/darknet";            PJ_C=f6afaabcdf85f77e7aff2ec55c020c0e297c77f9
AB="AlexeyAB/darknet";            AB_C=59596d7880f6504768df41d6daa586f5cb2b932f
L128="lightly-ai/coco128_yolo";   L128_C=6d6f7a059ea63efffdbe48aca2d52c04d4c510e9
H128="developer0hye/COCO128";     H128_C=47a3de30aaf7ad1c02105bd80598fb03ac0d0789
MINI="Obmutescence/COCO-MINI";    MINI_C=644f29e7c1d2eefd9c4412d39bc5b0ee6fd0afd4

raw() { echo "$GH/$1/raw/$2/$3"; }        # repo, commit, path -> download URL

NAMES=634a1132eb33f8091d60f2c346ababe8b905ae08387037aed883953b7329af84
FZ=ModelZoo/yolo-fastest-1.1_coco
F0=ModelZoo/yolo-fastest-1.0_coco
# path | size in bytes | sha256 | where to get it
FILES=(
"models/yolo-fastest-1.1/yolo-fastest-1.1.weights|1384268|1c445c42bbd6df63edea2cc69f99667b5650d663ca11e34b116240740cd42890|$(raw $FASTEST $FASTEST_C $FZ/yolo-fastest-1.1.weights)"
"models/yolo-fastest-1.1/yolo-fastest-1.1.cfg|9685|f6df5775c1e862998cf69046eba9265be3ae84dfe8b2caab7529823f0795bf70|$(raw $FASTEST $FASTEST_C $FZ/yolo-fastest-1.1.cfg)"
"models/yolo-fastest-1.1/coco.names|625|$NAMES|$(raw $FASTEST $FASTEST_C $FZ/coco.names)"
"models/yolo-fastest-1.1/mAP_log.txt|16423|298e180790428820efff27bf9dee3ca5502c049d0b3948af00b3074170e68269|$(raw $FASTEST $FASTEST_C $FZ/mAP_log.txt)"
"models/yolo-fastest-1.1-xl/yolo-fastest-1.1-xl.weights|3693964|fac5fb41786c1f38f04972a658443b189f48720d7d117f9a044100e98a35b0c5|$(raw $FASTEST $FASTEST_C $FZ/yolo-fastest-1.1-xl.weights)"
"models/yolo-fastest-1.1-xl/yolo-fastest-1.1-xl.cfg|9696|c458427acc4fbeabceff4528ef7b65b066c0308ce599460f8ba299eba63abad3|$(raw $FASTEST $FASTEST_C $FZ/yolo-fastest-1.1-xl.cfg)"
"models/yolo-fastest-1.1-xl/coco.names|625|$NAMES|$(raw $FASTEST $FASTEST_C $FZ/coco.names)"
"models/yolo-fastest-1.1-xl/mAP_log.txt|16295|2c456623f336b2de8b737dcf3fec14dc5f391f5e299f66ef342a98548a1589e2|$(raw $FASTEST $FASTEST_C $FZ/xl-mAP_log.txt) (saved as mAP_log.txt)"
"models/yolo-fastest-1.0/yolo-fastest.weights|1425644|649e84005cae13ef4f44c02b6683133be854382baed0dc36cd8faadd250b06e8|$(raw $FASTEST $FASTEST_C $F0/yolo-fastest.weights)"
"models/yolo-fastest-1.0/yolo-fastest.cfg|9573|c882b6b892840f6f17aa9924b258122b00d21c8908dc306adbf401142a3cb846|$(raw $FASTEST $FASTEST_C $F0/yolo-fastest.cfg)"
"models/yolo-fastest-1.0/coco.names|625|$NAMES|$(raw $FASTEST $FASTEST_C $FZ/coco.names)"
"models/yolo-fastest-xl-1.0/yolo-fastest-xl.weights|3650764|eb37bc51b21efc53f383de29b7504f818b1a9cb9949a2d62b332ba56e44a4027|$(raw $FASTEST $FASTEST_C $F0/yolo-fastest-xl.weights)"
"models/yolo-fastest-xl-1.0/yolo-fastest-xl.cfg|9701|036f1def6b96271bd6ec590dca80e833323d324e99450ec9aa5375f0b826d18b|$(raw $FASTEST $FASTEST_C $F0/yolo-fastest-xl.cfg)"
"models/yolo-fastest-xl-1.0/coco.names|625|$NAMES|$(raw $FASTEST $FASTEST_C $FZ/coco.names)"
"models/yolo-lite-coco-trial6/trial6_653550.weights|2597684|36db3caea3f836f702994f264a895d31f5f5a80d4d007abdc006b27a4389aaf2|$(raw $LITE $LITE_C cocoweights/trial6_653550.weights)"
"models/yolo-lite-coco-trial6/trial6.cfg|1264|75f26b88b0ec988aae1410ad42a5b4ae5fcfddfc7458ce8d38d9a7a619780534|$(raw $LITE $LITE_C cococfg/trial6.cfg)"
"models/yolo-lite-coco-trial6/coco.names|625|$NAMES|$(raw $PJ $PJ_C data/coco.names)"
"models/cfg-only/yolov3.cfg|8342|22489ea38575dfa36c67a90048e8759576416a79d32dc11e15d2217777b9a953|$(raw $PJ $PJ_C cfg/yolov3.cfg) (also Debian package darknet: /usr/share/darknet/cfg/)"
"models/cfg-only/yolov3-tiny.cfg|1915|84eb7a675ef87c906019ff5a6e0effe275d175adb75100dcb47f0727917dc2c7|$(raw $PJ $PJ_C cfg/yolov3-tiny.cfg)"
"models/cfg-only/yolov4.cfg|12231|a6d0f8e5c62cc8378384f75a8159b95fa2964d4162e33351b00ac82e0fc46a34|$(raw $AB $AB_C cfg/yolov4.cfg)"
"models/cfg-only/yolov4-tiny.cfg|3231|f858e3724962eedf3ac44e3b6cb3f0c3d9ed067c306bb831f539c578b924c90e|$(raw $AB $AB_C cfg/yolov4-tiny.cfg)"
"models/cfg-only/yolov7-tiny.cfg|7562|9fbd49151721a52d23112717c0d66552363c899befb8920a7c6857f4d9d8ba46|$(raw $AB $AB_C cfg/yolov7-tiny.cfg)"
"models/cfg-only/coco.names|625|$NAMES|$(raw $PJ $PJ_C data/coco.names)"
)

# folder | sha256 of its SHA256SUMS | files expected (incl. SHA256SUMS) | where to get it (lines split by ';')
FOLDERS=(
"datasets/darknet-samples|68a8d6a3ded4119e5451c5bed82f1ed10d13901823c0bce34fe4899b2692209c|8|$GH/$PJ/tree/$PJ_C/data: dog, eagle, giraffe, horses, kite, person, scream .jpg (also Debian package darknet: /usr/share/darknet/data/)"
"datasets/coco128|32c9df3a6f59d70793016d8d21eb9d7aa8d15ff1a6974cb9553e922cc215284c|256|images/ (128 jpg): $GH/$L128/tree/$L128_C/images/train2017;labels/ (126 txt): $GH/$L128/tree/$L128_C/object_detection/labels/train2017 (drop the 2 orphan labels 000000000656, 000000000659);annotations/instances_train2017_coco128.json: $(raw $H128 $H128_C annotations/instances_train2017.json)"
"datasets/coco-mini|1f40e1223f6f62effe9a66ac6c1df94f025163071946822ab6fb3488ec4a236f|401|val2017/images (79 labelled), val2017_unlabelled/images (the other 80 of that folder), train2017/images (80): $GH/$MINI/tree/$MINI_C (val2017/, train2017/);annotations/instances_{val,train}2017_mini.json: the same repository, annotations/instances_{val,train}2017.json;labels/*.txt: derived from those json files (YOLO format, iscrowd excluded, see DATA.md)"
)

missing=0
bad=0
report() {                      # what, path, origin lines (';'-separated)
    printf '%-8s %s\n' "$1" "$2"
    local IFS=';'
    for o in $3; do printf '         get: %s\n' "$o"; done
}

for row in "${FILES[@]}"; do
    IFS='|' read -r rel size sum origin <<<"$row"
    f=$data/$rel
    if [ ! -f "$f" ]; then
        report MISSING "$f" "$origin"; missing=$((missing + 1)); continue
    fi
    got=$(stat -c %s "$f")
    if [ "$got" != "$size" ]; then
        report BAD "$f ($got bytes, expected $size)" "$origin"; bad=$((bad + 1)); continue
    fi
    if [ $verify = 1 ] && [ "$(sha256sum <"$f" | cut -d' ' -f1)" != "$sum" ]; then
        report BAD "$f (sha256 differs from DATA.md)" "$origin"; bad=$((bad + 1))
    fi
done

for row in "${FOLDERS[@]}"; do
    IFS='|' read -r rel sums count origin <<<"$row"
    d=$data/$rel
    if [ ! -f "$d/SHA256SUMS" ]; then
        report MISSING "$d/ (no SHA256SUMS: the folder is absent or incomplete)" "$origin"
        missing=$((missing + 1)); continue
    fi
    if [ "$(sha256sum <"$d/SHA256SUMS" | cut -d' ' -f1)" != "$sums" ]; then
        report BAD "$d/SHA256SUMS (differs from DATA.md: a different version of the set)" "$origin"
        bad=$((bad + 1)); continue
    fi
    # Every file SHA256SUMS lists must be there (two spaces separate hash and path).
    gone=()
    while read -r _ p; do
        [ -f "$d/$p" ] || gone+=("$p")
    done <"$d/SHA256SUMS"
    n=$(( $(wc -l <"$d/SHA256SUMS") + 1 ))
    if [ $n != "$count" ]; then
        report BAD "$d/SHA256SUMS lists $((n - 1)) files, expected $((count - 1))" "$origin"
        bad=$((bad + 1)); continue
    fi
    if [ ${#gone[@]} -gt 0 ]; then
        report MISSING "$d/: ${#gone[@]} of $((n - 1)) files, e.g. ${gone[*]:0:3}" "$origin"
        missing=$((missing + 1)); continue
    fi
    if [ $verify = 1 ] && ! (cd "$d" && sha256sum --quiet -c SHA256SUMS >/dev/null 2>&1); then
        failed=$(cd "$d" && sha256sum --quiet -c SHA256SUMS 2>/dev/null | head -3 | tr '\n' ' ')
        report BAD "$d/: contents differ from SHA256SUMS: $failed" "$origin"
        bad=$((bad + 1))
    fi
done

total=$(( ${#FILES[@]} + ${#FOLDERS[@]} ))
if [ $missing -eq 0 ] && [ $bad -eq 0 ]; then
    echo "check-data: all $total items present in $data$([ $verify = 1 ] && echo ', hashes verified')"
    exit 0
fi
echo "check-data: $missing missing, $bad wrong, of $total items in $data (origins: DATA.md)"
exit 1
