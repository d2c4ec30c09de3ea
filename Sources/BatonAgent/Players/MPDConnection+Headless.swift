extension MPDConnection {
    /// The text of an `mpd.conf` for a headless MPD on 127.0.0.1:`port`: music under
    /// `musicDirectory`, its database, log and state under `stateDirectory`, a null audio
    /// output (which keeps real time and has a volume), and no scanning or zeroconf of its own.
    /// What the tests, the benchmark and a first try of a player app run.
    public static func headlessConfiguration(musicDirectory: String, stateDirectory: String, port: Int) -> String {
        """
        music_directory "\(musicDirectory)"
        db_file "\(stateDirectory)/mpd.db"
        log_file "\(stateDirectory)/mpd.log"
        state_file "\(stateDirectory)/mpd.state"
        bind_to_address "127.0.0.1"
        port "\(port)"
        auto_update "no"
        zeroconf_enabled "no"
        audio_output {
          type "null"
          name "null-out"
          mixer_type "null"
        }
        """
    }
}
