
# Added by redlock to clap's completion: the command that `redlock exec` runs
# is completed as a command line of its own, both after `--` and after NAME
# (`redlock exec NAME CMD ...`); a lock NAME is completed from
# `redlock list --names`; everything else is left to clap's _redlock_clap above.

# Reads the words before the one being completed, as redlock parses them,
# into _redlock_sub (the subcommand), _redlock_positionals (how many of its
# arguments came before), _redlock_skip (the word is an option's value),
# _redlock_dashdash (a `--` came), _redlock_start (the index in $words of the
# first word of exec's command, if it started) and _redlock_globals (the
# options that choose the servers, to pass on to `redlock list`).
_redlock_scan() {
    local takes_value=" @TAKES_VALUE@ " global_value=" @GLOBAL_VALUE@ "
    local i=2 j word
    _redlock_sub="" _redlock_positionals=0 _redlock_skip="" _redlock_dashdash=""
    _redlock_start="" _redlock_globals=()
    while (( i < CURRENT )); do
        word=${words[i]}
        (( i++ ))
        if [[ -n $_redlock_skip ]]; then
            [[ $_redlock_skip == global ]] && _redlock_globals+=("$word")
            _redlock_skip=""
            continue
        fi
        if [[ -n $_redlock_dashdash ]]; then
            (( _redlock_positionals++ ))
            continue
        fi
        case $word in
            (--)
                _redlock_dashdash=1
                [[ $_redlock_sub == exec ]] && { _redlock_start=$i; return 0 }
                ;;
            (-c|--command)
                [[ $_redlock_sub == exec ]] && { _redlock_skip=1; _redlock_positionals=2 }
                ;;
            (-c?*|--command=*)
                [[ $_redlock_sub == exec ]] && _redlock_positionals=2
                ;;
            (--*=*)
                [[ $global_value == *" ${word%%=*} "* ]] && _redlock_globals+=("$word")
                ;;
            (--*)
                if [[ $global_value == *" $word "* ]]; then
                    _redlock_globals+=("$word")
                    _redlock_skip=global
                elif [[ $takes_value == *" $word "* ]]; then
                    _redlock_skip=1
                fi
                ;;
            (-?*)
                # A cluster of short flags: the first that takes a value
                # takes the rest of the word, or the next word.
                for (( j = 2; j <= ${#word}; j++ )); do
                    if [[ $takes_value == *" -${word[j]} "* ]]; then
                        if [[ $global_value == *" -${word[j]} "* ]]; then
                            _redlock_globals+=("$word")
                            (( j == ${#word} )) && _redlock_skip=global
                        else
                            (( j == ${#word} )) && _redlock_skip=1
                        fi
                        break
                    fi
                done
                ;;
            (*)
                if [[ -z $_redlock_sub ]]; then
                    _redlock_sub=$word
                else
                    (( _redlock_positionals++ ))
                    if [[ $_redlock_sub == exec ]] && (( _redlock_positionals == 2 )); then
                        _redlock_start=$(( i - 1 ))
                        return 0
                    fi
                fi
                ;;
        esac
    done
    # The word being completed starts exec's command, unless it is an option.
    if [[ $_redlock_sub == exec && -z $_redlock_skip && $_redlock_positionals == 1 &&
        ${words[CURRENT]} != -* ]]; then
        _redlock_start=$CURRENT
    fi
    return 0
}

# The names of the locks that start with the word being completed, from
# the servers the command line names, within a second; clap's _arguments
# calls it for NAME, with the words the scan above read.
_redlock_lock_names() {
    local -a names timeout
    (( $+commands[timeout] )) && timeout=(timeout 1)
    names=(${(f)"$($timeout $_redlock_program $_redlock_globals list --names -- "${PREFIX}*" 2>/dev/null)"})
    compadd -X 'lock name' -a names
}

_redlock() {
    local _redlock_sub _redlock_positionals _redlock_skip _redlock_dashdash _redlock_start
    local -a _redlock_globals
    local _redlock_program=${words[1]}
    _redlock_scan
    if [[ -n $_redlock_start ]]; then
        shift $(( _redlock_start - 1 )) words
        (( CURRENT -= _redlock_start - 1 ))
        _normal
        return
    fi
    # clap's _arguments calls _redlock_lock_names for NAME.
    _redlock_clap "$@"
}
