
# Added by redlock to clap's completion: the command that `redlock exec` runs
# is completed as a command line of its own, both after `--` and after NAME
# (`redlock exec NAME CMD ...`); a lock NAME is completed from
# `redlock list --names`. The completions above stand aside while the
# command is being completed.

# Reads the words before the one being completed, as redlock parses them,
# and prints: the subcommand, how many of its arguments came before, whether
# the word is an option's value (1) or not (0), whether a `--` came (1 or 0),
# the index of the first word of exec's command (0: none), and then the
# options that choose the servers, to pass on to `redlock list`.
function __fish_redlock_scan
    set -l takes_value @TAKES_VALUE@
    set -l global_value @GLOBAL_VALUE@
    set -l words (commandline -opc)
    set -l sub ''
    set -l positionals 0
    set -l skip 0
    set -l dashdash 0
    set -l start 0
    set -l globals
    set -l i 1
    for word in $words[2..-1]
        set i (math $i + 1)
        if test $skip != 0
            test $skip = global; and set -a globals $word
            set skip 0
            continue
        end
        if test $dashdash = 1
            set positionals (math $positionals + 1)
            continue
        end
        switch $word
            case --
                set dashdash 1
                if test "$sub" = exec
                    set start (math $i + 1)
                    break
                end
            case -c --command
                if test "$sub" = exec
                    set skip 1
                    set positionals 2
                end
            case '-c?*' '--command=*'
                test "$sub" = exec; and set positionals 2
            case '--*=*'
                contains -- (string split -m1 = -- $word)[1] $global_value; and set -a globals $word
            case '--*'
                if contains -- $word $global_value
                    set -a globals $word
                    set skip global
                else if contains -- $word $takes_value
                    set skip 1
                end
            case '-?*'
                # A cluster of short flags: the first that takes a value
                # takes the rest of the word, or the next word.
                set -l n (string length -- $word)
                for j in (seq 2 $n)
                    set -l flag -(string sub -s $j -l 1 -- $word)
                    if contains -- $flag $takes_value
                        if contains -- $flag $global_value
                            set -a globals $word
                            test $j = $n; and set skip global
                        else
                            test $j = $n; and set skip 1
                        end
                        break
                    end
                end
            case '*'
                if test -z "$sub"
                    set sub $word
                else
                    set positionals (math $positionals + 1)
                    if test "$sub" = exec -a $positionals = 2
                        set start $i
                        break
                    end
                end
        end
    end
    # The word being completed starts exec's command, unless it is an option.
    if test $start = 0 -a "$sub" = exec -a $skip = 0 -a $positionals = 1
        and not string match -q -- '-*' (commandline -ct)
        set start (math (count $words) + 1)
    end
    printf '%s\n' "$sub" $positionals $skip $dashdash $start $globals
end

# Whether the word being completed is part of exec's command.
function __fish_redlock_in_exec_command
    set -l scan (__fish_redlock_scan)
    test $scan[5] != 0
end

# The command line of exec's command, completed as fish completes it.
function __fish_redlock_exec_command
    set -l scan (__fish_redlock_scan)
    set -l words (commandline -opc)
    set -l line (string escape -- $words[$scan[5]..-1]) (commandline -ct)
    complete -C (string join ' ' -- $line)
end

# Whether the word being completed is a lock NAME.
function __fish_redlock_wants_name
    set -l scan (__fish_redlock_scan)
    contains -- "$scan[1]" acquire release extend status exec
    and test $scan[2] = 0 -a $scan[3] = 0 -a $scan[4] = 0 -a $scan[5] = 0
    and not string match -q -- '-*' (commandline -ct)
end

# The names of the locks that start with the word being completed, from
# the servers the command line names, within a second.
function __fish_redlock_lock_names
    set -l scan (__fish_redlock_scan)
    set -l redlock (commandline -opc)[1]
    set -l timeout
    command -q timeout; and set timeout timeout 1
    $timeout $redlock $scan[6..-1] list --names -- (commandline -ct)'*' 2>/dev/null
end

complete -c redlock -n __fish_redlock_in_exec_command -f -a '(__fish_redlock_exec_command)'
complete -c redlock -n __fish_redlock_wants_name -f -a '(__fish_redlock_lock_names)'
